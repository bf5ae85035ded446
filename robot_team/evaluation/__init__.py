"""Evaluation: the published 17-point process rubric scored from event records, over trials."""
