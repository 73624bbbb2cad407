"""Running measurements: a stored run's life cycle (lifecycle), a sweep of
benchmark points (runner), live progress (progress), the machine's
environment (environment), crosscheck's naive comparisons (crosscheck)."""
