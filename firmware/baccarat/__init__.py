"""Pure baccarat game core: no hardware, no I/O, no clock.

Kept apart from drivers and board bring-up so that the same files run on the
shoe, in the MicroPython unix VM and under CPython, and so that a regulator's
lab can review the rules code on its own.
"""
