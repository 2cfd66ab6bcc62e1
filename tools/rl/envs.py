"""The two learning problems over saturn's search environment.

PassOrderEnv (after XLA's pass-ordering agent): an action runs one rule group
of the default order as a pass, for one iteration or to a fixpoint (at most
saturn.DEFAULT_PASS_ITERATIONS), or stops; the observation is a vector (the
best graph's operator histogram, the e-graph's size against the budget, the
cost so far, which passes ran and changed the e-graph, and the share of each
group's rules that match now).

RuleChoiceEnv (after X-RLflow): an action applies one rule to all its
matches, or stops; the observation is the current best graph (operator of
each node and its edges) with a few global features, and the legal actions
are the rules that match, but for those whose last application changed
nothing and nothing changed since.

Both reward a step with its cost reduction over the input's cost, so an
episode's return is the fraction of the cost removed. An episode ends on
stop, when the e-node budget is spent, or after max_steps actions.
"""

import numpy as np

import saturn

# The zoo models the agents train on, and the ones they are judged on
# (never seen in training).
TRAIN_MODELS = ["bert", "resnext50", "nasnet_a", "inception_v3", "squeezenet", "gpt2", "swin"]
HELD_OUT_MODELS = ["nasrnn", "resnet50", "vgg19", "mobilenet_v2", "llama"]


def load_models(names):
    return {name: saturn.load(name) for name in names}


class _Base:
    """What both problems share: the saturn environment and the episode."""

    def __init__(self, model, cost, budget_nodes, max_steps, op_names=None):
        self.env = saturn.Environment(model, cost=cost, budget_nodes=budget_nodes)
        self.budget_nodes = budget_nodes
        self.max_steps = max_steps
        self.steps = 0
        # The operator types a policy sees: saturn's, or those a policy was
        # trained with (an operator it never saw counts as an opaque one).
        self.op_names = list(op_names or saturn.OP_NAMES)
        opaque = self.op_names.index("Opaque")
        self._op_index = np.asarray([self.op_names.index(n) if n in self.op_names else opaque
                                     for n in saturn.OP_NAMES], dtype=np.int64)
        self.num_op_types = len(self.op_names)
        self._initial_cost = self.env.observation()["initial_cost"]

    def _op_counts(self, o):
        counts = np.zeros(self.num_op_types, dtype=np.float32)
        np.add.at(counts, self._op_index, np.asarray(o["op_counts"], dtype=np.float32))
        return counts

    def _globals(self, o):
        initial = max(o["initial_cost"], 1e-9)
        return [
            min(o["nodes"] / self.budget_nodes, 1.0),
            o["cost"] / initial,
            self.steps / self.max_steps,
        ]

    def cost(self):
        return self.env.cost()

    def initial_cost(self):
        return self._initial_cost

    def best_model(self):
        return self.env.best_model()


class PassOrderEnv(_Base):
    """Rule groups as passes (one iteration, or to a fixpoint), and stop."""

    ITERATIONS = (1, saturn.DEFAULT_PASS_ITERATIONS)

    def __init__(self, model, cost="opcount", budget_nodes=2000, max_steps=12, op_names=None):
        super().__init__(model, cost, budget_nodes, max_steps, op_names)
        groups = self.env.rule_groups
        self.groups = list(saturn.DEFAULT_ORDER)
        self.group_rules = [[r for r, g in enumerate(groups) if g == name] for name in self.groups]
        self.actions = [(g, k) for g in range(len(self.groups)) for k in self.ITERATIONS]
        self.num_actions = len(self.actions) + 1  # and stop
        self.stop_action = len(self.actions)
        self.group_of = {r: g for g, rules in enumerate(self.group_rules) for r in rules}
        self.obs_dim = self.num_op_types + 3 + 3 * len(self.groups)

    def reset(self):
        self.env.reset()
        self.steps = 0
        self.ran = np.zeros(len(self.groups), dtype=np.float32)
        self.changed = np.zeros(len(self.groups), dtype=np.float32)
        return self._observe()

    def _observe(self):
        o = self.env.observation()
        hist = np.log1p(self._op_counts(o)) / 8.0
        glob = np.asarray(self._globals(o), dtype=np.float32)
        # Per group, the share of its rules that match now (mask() reads the
        # same state's matches).
        matching = np.zeros(len(self.groups), dtype=np.float32)
        for r in self.env.legal_actions():
            if r in self.group_of:
                matching[self.group_of[r]] += 1.0
        self.matching_groups = matching > 0
        matching /= np.asarray([max(len(rules), 1) for rules in self.group_rules], dtype=np.float32)
        return np.concatenate([hist, glob, self.ran / self.max_steps, self.changed, matching])

    def mask(self):
        """The passes of groups some rule of which matches, and stop (of the
        state the last observation describes)."""
        m = np.ones(self.num_actions, dtype=bool)
        for a, (g, _) in enumerate(self.actions):
            m[a] = self.matching_groups[g]
        return m

    def step(self, action):
        """(observation, reward, done)"""
        if action == self.stop_action:
            return self._observe(), 0.0, True
        group, iterations = self.actions[action]
        reward, out_of_budget, info = self.env.step_rules(self.group_rules[group], iterations)
        self.steps += 1
        self.ran[group] += 1
        self.changed[group] = 1.0 if info["applied"] > 0 else 0.0
        done = out_of_budget or self.steps >= self.max_steps
        return self._observe(), reward, done

    def describe(self, action):
        if action == self.stop_action:
            return "stop"
        group, iterations = self.actions[action]
        return f"{self.groups[group]}x{iterations}"


class RuleChoiceEnv(_Base):
    """One rule on all its matches per step, and stop; a graph observation."""

    def __init__(self, model, cost="opcount", budget_nodes=2000, max_steps=30, op_names=None):
        super().__init__(model, cost, budget_nodes, max_steps, op_names)
        self.num_actions = self.env.num_actions  # the rules and stop
        self.stop_action = self.env.stop_action
        self.global_dim = 3

    def reset(self):
        self.env.reset()
        self.steps = 0
        self.stale = set()  # rules whose last application changed nothing since
        return self._observe()

    def _observe(self):
        o = self.env.observation()
        return {
            "node_ops": self._op_index[np.asarray(o["node_ops"], dtype=np.int64)],
            "edge_index": np.asarray(o["edge_index"], dtype=np.int64),
            "globals": np.asarray(self._globals(o), dtype=np.float32),
        }

    def mask(self):
        m = np.zeros(self.num_actions, dtype=bool)
        m[self.env.legal_actions()] = True  # the matching rules, then stop
        m[list(self.stale)] = False  # they would change nothing again
        m[self.stop_action] = True
        return m

    def step(self, action):
        if action == self.stop_action:
            return self._observe(), 0.0, True
        reward, out_of_budget, info = self.env.step(action)
        if info["applied"] > 0:
            self.stale.clear()  # the e-graph changed: every rule may match anew
        else:
            self.stale.add(action)
        self.steps += 1
        done = out_of_budget or self.steps >= self.max_steps
        return self._observe(), reward, done

    def describe(self, action):
        return "stop" if action == self.stop_action else self.env.rule_names[action]


ENVIRONMENTS = {"pass": PassOrderEnv, "rule": RuleChoiceEnv}
