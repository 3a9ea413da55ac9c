"""parley-toy-plugins: a protocol, an attack, a learner and a data set that parley finds by entry point."""
