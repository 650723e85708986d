"""Card-reader and sensor drivers. Each takes its bus object from the board."""


class ReaderFault(Exception):
    """The reader's reply could not be trusted (garbled, missing or refused).

    Raised with a message that says exactly what was wrong, so the main loop
    can report it as an irregularity and carry on with the next poll.
    """
