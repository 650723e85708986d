"""The batch shuffler's pure core: no hardware imports, MicroPython and CPython.

drbg (HMAC-DRBG, SP 800-90A), health (SP 800-90B-style continuous tests),
entropy (board and seeded sources), draw (unbiased integers), shuffle (the
random-gap elevator's decisions). docs/shuffler.md argues the design.
"""
