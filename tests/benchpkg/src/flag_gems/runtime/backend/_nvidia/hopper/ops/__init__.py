from hopper.ops.fill import fill  # noqa: F401
