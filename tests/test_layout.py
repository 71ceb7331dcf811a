"""Layout model: pods, GPUs and ranks per pod, computed by hand for each case."""

from generator.layout import Spread, compute_layout


def test_dp16_on_two_nodes():
    lay = compute_layout(1, 16, 1, True, "lws", 8, 1)
    assert lay.spread is Spread.DATA and lay.problem is None
    assert [p.dp_ranks for p in lay.pods] == [tuple(range(8)), tuple(range(8, 16))]
    assert lay.gpus_per_pod == 8 and lay.dp_local == 8 and lay.ep_size == 16
    assert lay.nodes_needed == 2


def test_tp8_single_node_with_replicas():
    lay = compute_layout(8, 1, 1, False, "lws", 8, 3)
    assert lay.spread is Spread.SINGLE and lay.nodes_needed == 3 and lay.ep_size == 1


def test_tp2_dp8_on_two_nodes():
    # 16 GPUs, 2 pods of 8: each pod holds 4 DP ranks of TP2.
    lay = compute_layout(2, 8, 1, True, "statefulset", 8, 1)
    assert lay.dp_local == 4 and [p.dp_start for p in lay.pods] == [0, 4]
    assert lay.ep_size == 16


def test_tp16_spans_nodes():
    lay = compute_layout(16, 1, 1, False, "lws", 8, 1)
    assert lay.spread is Spread.MODEL and len(lay.pods) == 2 and lay.gpus_per_pod == 8


def test_pp2_tp8_spans_nodes():
    lay = compute_layout(8, 1, 2, False, "lws", 8, 1)
    assert lay.spread is Spread.MODEL and lay.gpus_per_instance == 16


def test_pod_per_rank_packing():
    # 16 ranks of TP1 on 8-GPU nodes, 2 replicas: 32 pods, 8 per node -> 4 nodes.
    lay = compute_layout(1, 16, 1, True, "pod-per-rank", 8, 2)
    assert lay.spread is Spread.PER_RANK and len(lay.pods) == 16 and lay.nodes_needed == 4
    # TP4 ranks: 2 per node -> 8 ranks need 4 nodes.
    lay = compute_layout(4, 8, 1, False, "pod-per-rank", 8, 1)
    assert lay.nodes_needed == 4 and lay.gpus_per_pod == 4


def test_impossible_layouts_explain_themselves():
    # 12 GPUs over 2 pods of 6: TP4 ranks do not fit whole.
    lay = compute_layout(4, 3, 1, False, "lws", 8, 1)
    assert lay.problem and "whole ranks" in lay.problem
    # 20 GPUs do not split evenly over 3 pods.
    lay = compute_layout(1, 20, 1, True, "lws", 8, 1)
    assert lay.problem and "evenly" in lay.problem
    # A TP16 rank cannot be one pod on an 8-GPU node.
    lay = compute_layout(16, 2, 1, False, "pod-per-rank", 8, 1)
    assert lay.problem and "16 GPUs" in lay.problem


def test_instances_smaller_than_a_node_pack_when_they_may_share_it():
    """gpt-oss-120b as 8 instances of TP1 on one 8-GPU node (the reviewer's case: POOL002 said
    8 nodes): 8 // 1 = 8 pods a node -> ceil(8 / 8) = 1 node. TP2 x 5 replicas: 4 a node ->
    ceil(5 / 4) = 2 nodes. TP3: 8 // 3 = 2 a node, 3 replicas -> 2 nodes. TP6: one a node
    whatever the sharing. Without sharing (hostNetwork, placement, anti-affinity): a node each."""
    packed = compute_layout(1, 1, 1, False, "statefulset", 8, 8, share_nodes=True)
    assert packed.spread is Spread.SINGLE and packed.pods_per_node == 8
    assert packed.nodes_needed == 1 and packed.nodes_for(9) == 2
    assert packed.most_instances(3) == 24
    assert compute_layout(2, 1, 1, False, "lws", 8, 5, share_nodes=True).nodes_needed == 2
    assert compute_layout(3, 1, 1, False, "lws", 8, 3, share_nodes=True).nodes_needed == 2
    assert compute_layout(6, 1, 1, False, "lws", 8, 3, share_nodes=True).nodes_needed == 3
    apart = compute_layout(1, 1, 1, False, "statefulset", 8, 8, share_nodes=False)
    assert apart.pods_per_node == 1 and apart.nodes_needed == 8
    # Multi-node instances take whole nodes, sharing or not: DP16 over 8-GPU nodes, 3 replicas.
    assert compute_layout(1, 16, 1, True, "lws", 8, 3, share_nodes=True).nodes_needed == 6


def test_pool_nodes_packs_every_roles_small_pods_together():
    """One pool, counted together: 3 x TP2 prefill + 1 x TP2 decode = 8 GPUs on one 8-GPU
    node (POOL002 said 2: a node per role); 4 x TP2 + 1 x TP8 = 1 node of small pods + 1
    whole; first fit by decreasing GPUs: TP4, TP4, TP2, TP2, TP1 x 4 -> [4+4], [2+2+1+1+1+1]
    = 2 nodes. Pods that may not share a node take one each."""
    from generator.layout import pool_nodes
    tp2 = compute_layout(2, 1, 1, False, "lws", 8, 1, share_nodes=True)
    tp8 = compute_layout(8, 1, 1, False, "lws", 8, 1, share_nodes=True)
    tp4 = compute_layout(4, 1, 1, False, "lws", 8, 1, share_nodes=True)
    tp1 = compute_layout(1, 1, 1, False, "lws", 8, 1, share_nodes=True)
    assert pool_nodes([(tp2, 3), (tp2, 1)], 8) == 1
    assert pool_nodes([(tp2, 4), (tp8, 1)], 8) == 2
    assert pool_nodes([(tp4, 2), (tp2, 2), (tp1, 4)], 8) == 2
    apart = compute_layout(2, 1, 1, False, "lws", 8, 1, share_nodes=False)
    assert pool_nodes([(apart, 3), (tp2, 4)], 8) == 3 + 1
