"""The package-level import graph of mqtool, as the Mermaid block in docs/ARCHITECTURE.md.

`python docs/import_graph.py` rewrites the block between the markers in docs/ARCHITECTURE.md (`make
architecture`); `tests/test_docs.py` fails when the block is not what the code imports today. A node is a
package (`store/queue`) or the loose modules of a layer (`store/*.py`); an arrow A --> B says some module of A
imports some module of B (function-level imports included). Built with grimp, from the source, no imports run.
"""

from __future__ import annotations

import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("mqtool", "store", "formats")
BEGIN, END = "<!-- import-graph:begin -->", "<!-- import-graph:end -->"


def _node(module: str, packages: set[str]) -> str:
    parts = module.split(".")
    for depth in range(len(parts), 1, -1):
        if ".".join(parts[:depth]) in packages:
            return ".".join(parts[:depth])
    return parts[0]


def _label(node: str) -> str:
    return node.replace(".", "/") + ("/*.py" if "." not in node else "/")


def package_edges() -> tuple[dict[str, list[str]], set[tuple[str, str]]]:
    """(nodes per layer, edges between nodes) of the code under ROOT; imports only under TYPE_CHECKING
    do not count (they run no code)."""
    sys.path.insert(0, str(ROOT))
    graph = grimp.build_graph(*LAYERS, exclude_type_checking_imports=True)
    packages = {
        m
        for m in graph.modules
        if m.count(".") == 1 and (ROOT / m.replace(".", "/") / "__init__.py").exists()
    }
    nodes = {layer: sorted([layer] + [p for p in packages if p.startswith(layer + ".")]) for layer in LAYERS}
    edges = set()
    for module in graph.modules:
        a = _node(module, packages)
        for imported in graph.find_modules_directly_imported_by(module):
            b = _node(imported, packages)
            if a != b:
                edges.add((a, b))
    return nodes, edges


def _layer(node: str) -> str:
    return node.split(".")[0]


def mermaid() -> str:
    """Packages inside each layer with the imports between them; between layers one arrow per pair
    (every import across layers points down: `upward_imports` is empty)."""
    nodes, edges = package_edges()
    ident = {n: n.replace(".", "_") for layer in nodes.values() for n in layer}
    lines = ["```mermaid", "flowchart TB"]
    for layer in LAYERS:
        lines.append(f"  subgraph {layer}_layer[{layer}]")
        lines.extend(f'    {ident[n]}["{_label(n)}"]' for n in nodes[layer])
        inside = sorted((a, b) for a, b in edges if _layer(a) == _layer(b) == layer)
        lines.extend(f"    {ident[a]} --> {ident[b]}" for a, b in inside)
        lines.append("  end")
    across = sorted({(_layer(a), _layer(b)) for a, b in edges if _layer(a) != _layer(b)})
    lines.extend(f"  {a}_layer ==> {b}_layer" for a, b in across)
    lines.append("```")
    return "\n".join(lines)


def upward_imports() -> list[tuple[str, str]]:
    """Imports from a lower layer to a higher one (formats <- store <- mqtool): there must be none."""
    _, edges = package_edges()
    rank = {layer: i for i, layer in enumerate(reversed(LAYERS))}
    return sorted((a, b) for a, b in edges if rank[_layer(a)] < rank[_layer(b)])


def block() -> str:
    return f"{BEGIN}\n{mermaid()}\n{END}"


def current_block(text: str) -> str:
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[start:end]


def main() -> None:
    path = ROOT / "docs" / "ARCHITECTURE.md"
    text = path.read_text()
    path.write_text(text.replace(current_block(text), block()))


if __name__ == "__main__":
    main()
