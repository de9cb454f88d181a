"""Training and test-time scoring of any method: the encoders, the training loop (which knows no method),
its checkpoints, the learning-curve hook and the shared test-time loop."""
