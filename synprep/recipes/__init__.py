"""synprep.recipes"""
