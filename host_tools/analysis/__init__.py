"""Exact odds of the cards left in a shoe, and the advantage-play monitor.

Prices the same wagers, with the same resolvers and paytables, as
host_tools.settle, so a price and a settlement can never disagree.
"""
