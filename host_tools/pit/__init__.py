"""`shoe pit`: every table of a pit in one service (docs/design.md, "Pit server")."""
