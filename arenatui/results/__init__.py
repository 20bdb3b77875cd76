"""The read model: what a stored run means (StoredRun, RunResults, VariantResults, readouts), built from the store's
records with stats and tuning. The store below speaks SQL only."""
