"""synprep.features"""
