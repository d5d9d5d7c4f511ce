"""synprep.parse"""
