"""synprep.train"""
