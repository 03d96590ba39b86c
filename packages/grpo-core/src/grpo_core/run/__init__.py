"""Floor 6: preparing, building and running training: the trainer and its features, outputs, resume, held-out accuracy."""
