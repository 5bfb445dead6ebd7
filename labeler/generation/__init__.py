"""Generation: a system's answers, their claims and sentences, abstention, outcomes and the
generation metrics (faithfulness, correctness, answer relevance, abstention) from people, judges
and PPI++.
"""
