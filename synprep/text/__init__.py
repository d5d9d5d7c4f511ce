"""Text preparation: Moses tokenization (sacremoses), cleaning, joint BPE (subword-nmt)."""
