"""SentEval's tasks: the transfer tasks (rows, reading, scoring), its logistic-regression classifier
and validation schemes, and the relatedness regressor of its original STS-B / SICK-R protocol."""
