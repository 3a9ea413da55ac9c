"""parley-toy-plugins: protocols, attacks, a learner, a data set and an exchange that parley finds by entry point."""
