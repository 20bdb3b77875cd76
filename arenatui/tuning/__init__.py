"""Finding each model's concurrency optimum: per-level observations, the auto-tuner, tune and sweep drivers."""
