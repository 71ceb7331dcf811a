"""Output reporters: findings, the sizing report, explain, the plan table and the review page."""
