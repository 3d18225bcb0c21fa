"""The engine: the statistics seam, EM, row checks, streaming and Dask passes."""
