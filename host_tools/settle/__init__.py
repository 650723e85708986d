"""Wager settlement (Ch 7, 11B, 12): paytables, table settings, round facts.

The analysis package prices the same wagers with the same resolvers, so a
paytable or a reading of the rules text lives in exactly one place here.
"""
