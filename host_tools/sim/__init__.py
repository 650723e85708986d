"""Wire-level simulators of the shoe's card readers, each on a pty."""
