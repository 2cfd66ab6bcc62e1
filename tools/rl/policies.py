"""Actor-critic policies in plain torch, and their files.

MlpPolicy reads the pass-ordering observation (a vector). GnnPolicy reads a
graph: each node starts from an embedding of its operator, a few rounds of
message passing mix in the mean of its inputs' and of its readers' states,
and the graph's state (mean and max over nodes, with the global features)
gives the action logits and the value.
"""

import torch
from torch import nn


class MlpPolicy(nn.Module):
    kind = "pass"

    def __init__(self, obs_dim, num_actions, hidden=64):
        super().__init__()
        self.config = {"obs_dim": obs_dim, "num_actions": num_actions, "hidden": hidden}
        self.torso = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh(),
                                   nn.Linear(hidden, hidden), nn.Tanh())
        self.logits = nn.Linear(hidden, num_actions)
        self.value = nn.Linear(hidden, 1)

    def forward(self, observations):
        """observations: a list of vectors. Returns (logits [B, A], values [B])."""
        x = torch.as_tensor(torch.stack([torch.as_tensor(o) for o in observations]))
        h = self.torso(x)
        return self.logits(h), self.value(h).squeeze(-1)


class GnnPolicy(nn.Module):
    kind = "rule"

    def __init__(self, num_op_types, global_dim, num_actions, hidden=32, rounds=2):
        super().__init__()
        self.config = {"num_op_types": num_op_types, "global_dim": global_dim,
                       "num_actions": num_actions, "hidden": hidden, "rounds": rounds}
        self.embed = nn.Embedding(num_op_types, hidden)
        self.rounds = nn.ModuleList(nn.Linear(3 * hidden, hidden) for _ in range(rounds))
        self.head = nn.Sequential(nn.Linear(2 * hidden + global_dim, 2 * hidden), nn.Tanh())
        self.logits = nn.Linear(2 * hidden, num_actions)
        self.value = nn.Linear(2 * hidden, 1)

    @staticmethod
    def _mean_over(edges_from, edges_to, h, n):
        total = torch.zeros(n, h.shape[1]).index_add_(0, edges_to, h[edges_from])
        count = torch.zeros(n).index_add_(0, edges_to, torch.ones(edges_to.shape[0]))
        return total / count.clamp(min=1).unsqueeze(-1)

    def embed_graph(self, obs):
        ops = torch.as_tensor(obs["node_ops"])
        edges = torch.as_tensor(obs["edge_index"])
        h = self.embed(ops)
        n = ops.shape[0]
        for layer in self.rounds:
            inputs = self._mean_over(edges[0], edges[1], h, n)   # from the node's inputs
            readers = self._mean_over(edges[1], edges[0], h, n)  # from the nodes reading it
            h = torch.tanh(layer(torch.cat([h, inputs, readers], dim=-1)))
        return torch.cat([h.mean(0), h.max(0).values, torch.as_tensor(obs["globals"])])

    def forward(self, observations):
        g = self.head(torch.stack([self.embed_graph(o) for o in observations]))
        return self.logits(g), self.value(g).squeeze(-1)


def make_policy(kind, env):
    if kind == "pass":
        return MlpPolicy(env.obs_dim, env.num_actions)
    return GnnPolicy(env.num_op_types, env.global_dim, env.num_actions)


def save_policy(policy, path, meta):
    torch.save({"kind": policy.kind, "config": policy.config,
                "state_dict": policy.state_dict(), "meta": meta}, path)


def load_policy(path):
    """The policy in `path` and the metadata saved with it."""
    saved = torch.load(path, map_location="cpu", weights_only=False)
    if saved.get("kind") == "pass":
        policy = MlpPolicy(**saved["config"])
    elif saved.get("kind") == "rule":
        policy = GnnPolicy(**saved["config"])
    else:
        raise ValueError(f"{path}: not a saturn policy file (kind {saved.get('kind')!r})")
    policy.load_state_dict(saved["state_dict"])
    policy.eval()
    return policy, saved.get("meta", {})
