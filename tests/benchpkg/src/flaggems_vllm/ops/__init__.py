from flaggems_vllm.ops.scale import scale

__all__ = ["scale"]
