"""The virtual GPU: presets, hidden power/thermal/timing physics, sensors, and their ground truth."""
