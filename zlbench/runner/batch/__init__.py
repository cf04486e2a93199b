"""Many ops over several GPUs: the batch config, its plan (selection, shard, GPUs), the
worker threads and attempts, retry rules, ops_status.csv / summary.csv / batch.json,
and merging batch dirs."""
