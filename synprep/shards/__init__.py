"""synprep.shards"""
