"""Judging: run the hidden tests against each submission and turn outcomes into results."""
