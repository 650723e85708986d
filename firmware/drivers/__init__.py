"""Card-reader and sensor drivers. Each takes its bus object from the board."""


class ReaderFault(Exception):
    """The reader's reply could not be trusted (garbled, missing or refused).

    Raised with a message that says exactly what was wrong, so the main loop
    can report it as an irregularity and carry on with the next poll.
    """


class SecureElementFault(Exception):
    """The secure element did not answer, answered garbled, or refused.

    ``status`` is the chip's status code when it refused a command (0x0F
    execution error, 0x03 parse error, ...), or -1 when the fault was on the
    bus (no answer, CRC wrong), so a caller can tell a refusal from a wire.
    """

    def __init__(self, message, status=-1):
        Exception.__init__(self, message)
        self.status = status
