"""Classes built the way their package's users build them: none of them
builds from the ladder's three receivers (0, "alpha", five words)."""
