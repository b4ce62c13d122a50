"""Foundation layer (CMAS, data, ontology, tracker, protocol, clinical text, safety, paths): imports only agent.core."""
