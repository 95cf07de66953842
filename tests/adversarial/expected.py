"""The verdict (status, text in the detail) each timing adversary must get from ``nvfp4 run``."""

TIMING_ADVERSARIES = {
    "patches_event_timer": ("TAMPERED", "torch.cuda.Event.elapsed_time"),
    "patches_stats": ("TAMPERED", "harness.stats.summarize"),
    "writes_result_channel": ("TAMPERED", "verdict channel"),
    "late_thread": ("FAIL", "left a thread running"),
    "caches_by_data_ptr": ("FAIL", "of round 1"),
    "caches_by_content": ("FAIL", "shares storage with the output of an earlier call"),
    "first_call_only": ("FAIL", "of round 1"),
}
# Needs a GPU: work left on a side stream.
GPU_TIMING_ADVERSARIES = {**TIMING_ADVERSARIES, "side_stream": ("FAIL", "escapes the timed stream")}
