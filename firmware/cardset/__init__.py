"""Card sets: which physical cards belong to the shoe being dealt.

Kept apart from the game core because the core knows only rank and suit,
while a card set is about physical cards (tag UID or printed code, deck and
batch) and about catching the ones that do not belong. Pure logic: nothing
here touches a bus, a pin or a clock.
"""
