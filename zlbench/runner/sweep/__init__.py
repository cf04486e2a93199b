"""One op's autotune sweep split over several GPUs: the child processes and their merge."""
