"""A sweep in progress: the composition root (sweep), resume, and the live metrics folded from its events."""
