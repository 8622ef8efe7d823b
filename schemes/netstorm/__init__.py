"""NetStorm (in progress)."""
