"""Models that consume parameter files: IPP power, thermal, DVFS power, MWP/CWP and Wang-Chu timing, energy."""
