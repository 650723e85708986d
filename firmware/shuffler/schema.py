"""Every event the shuffler emits (``"source":"shuffler"``), for the host.

The shuffler writes its events as dicts (firmware/shuffler/link.py) and never
imports this; link/events_schema.py reads it for source "shuffler", so the
bridge checks a shuffler's events before it stores them, as a shoe's. Row
format and field kinds as in link/events_schema.py.

``records`` in a reveal is a string of 4 hex digits per card-set record
(the kinds have no list of numbers); ``cards`` are card names, or ``??`` for
an ID the card set does not know.
"""

EVENTS = (
    ("custody", "batch:str from:str to:str on:str cards:int? bad:int? missing:int? id:str? "
                "commit:str? reason:str? counter:int? sig:hex128? unsigned:str?"),
    ("custody_refused", "batch:str state:str on:str why:str"),
    ("batch_card", "kind:str pos:int name:str card:card? deck:int?"),
    ("tilt", "reason:str"),
    ("tilt_cleared", ""),
    ("mech_fault", "reason:str batch:str|null card:int"),
    ("door", "shut:bool locked:bool"),
    ("reveal", "batch:str id:str part:int parts:int from:int n:int salt:str commitment:str records:str cards:strs"),
    ("returned_commit", "batch:str id:str n:int commit:str"),
    ("returned", "batch:str id:str part:int parts:int from:int n:int salt:str commit:str records:str cards:strs"),
    ("shuffler_boot", "decks:int restored:bool"),
    # The released batch's order for its paired shoe, sealed (link/order.py):
    # ciphertext the pit relays to that shoe as an ``order`` command.
    ("order", "batch:str id:str shoe:str part:int parts:int n:int serial:int nonce:hex64 data:str"),
)
