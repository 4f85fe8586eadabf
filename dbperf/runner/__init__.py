"""Running the matrix: the driver process, the targets' data, and the order of cells."""
