"""Where a long-running command (`shoe bridge`, `shoe pit`) writes its log:
a file beside its store, rotated, because a pit runs for months and a full
disk would stop the record before the log."""

import logging
import logging.handlers

LOG_BYTES = 10 * 1024 * 1024  # a log file is rotated at this size...
LOG_KEEP = 5                  # ...keeping this many old ones


def to_file(path):
    """The "shoe" loggers to ``path`` at INFO, timestamped and rotated; the
    handler is returned so the caller can remove and close it at exit."""
    handler = logging.handlers.RotatingFileHandler(path, maxBytes=LOG_BYTES, backupCount=LOG_KEEP)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("shoe")
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    return handler
