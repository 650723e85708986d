"""`shoe soak`: long chaos, noise and fuzz runs that `make test` only samples."""
