import sys

import saturn

model = saturn.load(sys.argv[1])  # an ONNX or JSON file, or a zoo model
result = saturn.optimize(model, search="mcts", budget_nodes=2000, cost="roofline:gpu-a100")
result.save(sys.argv[2])
print(f"{model.name}: cost {result.cost_before:.1f} -> {result.cost_after:.1f}")
