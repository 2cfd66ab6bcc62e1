"""Proximal policy optimization (Schulman et al., 2017) over the environments
of envs.py: clipped surrogate objective, a learned value baseline,
generalized advantage estimation, an entropy bonus, illegal actions masked.
"""

import random
from dataclasses import dataclass, field

import numpy as np
import torch


@dataclass
class PpoConfig:
    updates: int = 60              # policy updates
    episodes_per_update: int = 16  # episodes collected before each update
    epochs: int = 4               # passes over the collected steps per update
    minibatch: int = 32
    lr: float = 1e-3
    gamma: float = 1.0            # episodes are short and the return is the total gain
    lam: float = 0.95
    clip: float = 0.2
    value_coef: float = 0.5
    entropy_coef: float = 0.01
    reward_scale: float = 10.0    # rewards are fractions of the cost: a few hundredths
    seed: int = 1


@dataclass
class Episode:
    model: str
    observations: list = field(default_factory=list)
    masks: list = field(default_factory=list)
    actions: list = field(default_factory=list)
    log_probs: list = field(default_factory=list)
    values: list = field(default_factory=list)
    rewards: list = field(default_factory=list)

    @property
    def gain(self):
        """The fraction of the input's cost the episode removed."""
        return float(sum(self.rewards))


def masked_logits(logits, masks):
    return logits.masked_fill(~torch.as_tensor(np.stack(masks)), -1e9)


def run_episode(policy, env, model_name, greedy=False, rng=None):
    """One episode; greedy takes the likeliest action instead of sampling."""
    ep = Episode(model_name)
    obs, done = env.reset(), False
    while not done:
        mask = env.mask()
        with torch.no_grad():
            logits, value = policy([obs])
            dist = torch.distributions.Categorical(logits=masked_logits(logits, [mask])[0])
            if greedy:
                action = int(torch.argmax(dist.probs))
            else:
                action = int(torch.multinomial(dist.probs, 1, generator=rng))
        next_obs, reward, done = env.step(action)
        ep.observations.append(obs)
        ep.masks.append(mask)
        ep.actions.append(action)
        ep.log_probs.append(float(dist.log_prob(torch.tensor(action))))
        ep.values.append(float(value[0]))
        ep.rewards.append(float(reward))
        obs = next_obs
    return ep


def advantages(ep, config):
    """GAE advantages and the value targets of an episode's steps."""
    rewards = np.asarray(ep.rewards) * config.reward_scale
    values = np.asarray(ep.values + [0.0])
    adv = np.zeros(len(rewards))
    running = 0.0
    for t in reversed(range(len(rewards))):
        delta = rewards[t] + config.gamma * values[t + 1] - values[t]
        running = delta + config.gamma * config.lam * running
        adv[t] = running
    return adv, adv + values[:-1]


def update(policy, optimizer, episodes, config, rng):
    """One PPO update over the episodes' steps; returns the mean loss."""
    steps = []
    for ep in episodes:
        adv, targets = advantages(ep, config)
        for t in range(len(ep.actions)):
            steps.append((ep.observations[t], ep.masks[t], ep.actions[t], ep.log_probs[t],
                          adv[t], targets[t]))
    all_adv = np.asarray([s[4] for s in steps])
    mean, std = all_adv.mean(), all_adv.std() + 1e-8
    losses = []
    for _ in range(config.epochs):
        order = list(range(len(steps)))
        rng.shuffle(order)
        for start in range(0, len(order), config.minibatch):
            batch = [steps[i] for i in order[start:start + config.minibatch]]
            logits, values = policy([b[0] for b in batch])
            dist = torch.distributions.Categorical(logits=masked_logits(logits, [b[1] for b in batch]))
            actions = torch.tensor([b[2] for b in batch])
            ratio = torch.exp(dist.log_prob(actions) - torch.tensor([b[3] for b in batch]))
            adv = (torch.tensor([b[4] for b in batch], dtype=torch.float32) - mean) / std
            surrogate = torch.min(ratio * adv, ratio.clamp(1 - config.clip, 1 + config.clip) * adv)
            targets = torch.tensor([b[5] for b in batch], dtype=torch.float32)
            loss = (-surrogate.mean() + config.value_coef * ((values - targets) ** 2).mean()
                    - config.entropy_coef * dist.entropy().mean())
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), 0.5)
            optimizer.step()
            losses.append(float(loss))
    return float(np.mean(losses))


def train(policy, make_env, models, config, log=print):
    """Trains `policy` on environments make_env(model) of the named models
    (a dict of saturn models). Returns the learning curve: per update, the
    mean gain of its episodes and the loss."""
    random.seed(config.seed)
    np.random.seed(config.seed)
    torch.manual_seed(config.seed)
    rng = random.Random(config.seed)
    sampler = torch.Generator().manual_seed(config.seed)
    envs = {name: make_env(model) for name, model in models.items()}
    names = sorted(envs)
    optimizer = torch.optim.Adam(policy.parameters(), lr=config.lr)
    curve = []
    for u in range(config.updates):
        episodes = []
        for _ in range(config.episodes_per_update):
            name = names[rng.randrange(len(names))]
            episodes.append(run_episode(policy, envs[name], name, rng=sampler))
        loss = update(policy, optimizer, episodes, config, rng)
        gain = float(np.mean([ep.gain for ep in episodes]))
        curve.append({"update": u + 1, "mean_gain": gain, "loss": loss})
        log(f"update {u + 1}/{config.updates}: mean gain {100 * gain:.2f}%, loss {loss:.4f}")
    return curve
