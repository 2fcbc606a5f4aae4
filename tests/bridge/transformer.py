"""A small transformer block (embedding, layer_norm, attention with softmax, gelu) trained with
AdamW, for the bridge's tests."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import models


class Block(nn.Module):
    def __init__(self, vocab=50, dim=32, heads=4, hidden=64, classes=5):
        super().__init__()
        self.heads = heads
        self.embed = nn.Embedding(vocab, dim)
        self.norm1 = nn.LayerNorm(dim)
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        self.head = nn.Linear(dim, classes)

    def attention(self, x):
        b, s, d = x.shape
        h = self.heads

        def split(t):
            return t.view(b, s, h, d // h).transpose(1, 2).reshape(b * h, s, d // h)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(d // h)
        out = torch.bmm(torch.softmax(scores, dim=-1), v)
        return self.proj(out.view(b, h, s, d // h).transpose(1, 2).reshape(b, s, d))

    def forward(self, tokens):
        x = self.embed(tokens)
        x = x + self.attention(self.norm1(x))
        x = x + self.fc2(F.gelu(self.fc1(self.norm2(x)), approximate="tanh"))
        return self.head(x.mean(1))


def train_block(device, steps, mark_step=None, on_step=None, autocast=False):
    torch.manual_seed(0)
    model = Block().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    data = torch.Generator().manual_seed(2)

    def batch():
        return torch.randint(0, 50, (4, 16), generator=data), torch.randint(0, 5, (4,), generator=data)

    return models.train_loop(device, model, optimizer, batch, F.cross_entropy, steps, mark_step, on_step, autocast)
