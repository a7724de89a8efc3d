"""Render the chat-template fixtures with jinja2 configured as transformers configures it
(trim_blocks, lstrip_blocks, loop controls, a sandbox, raise_exception), and write the expected
outputs the Rust tests compare against.

    python3 scripts/render_chat_templates.py
"""
import json
import pathlib

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "chat"

CONVERSATIONS = [
    [{"role": "user", "content": "put a clean mug in the coffeemachine"}],
    [
        {"role": "system", "content": "You are a household agent."},
        {"role": "user", "content": "Task: heat some egg.\nAdmissible: 1. look 2. go to fridge 1"},
        {"role": "assistant", "content": "<think>\nThe egg may be cold.\n</think>\n\nI go. \\boxed{2}"},
        {"role": "user", "content": "You arrive at fridge 1. The fridge 1 is closed."},
    ],
    [
        {"role": "system", "content": "Judge the step."},
        {"role": "user", "content": "Step: open fridge 1"},
        {"role": "assistant", "content": "It helps. \\boxed{1}"},
    ],
]


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def main():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.globals["raise_exception"] = raise_exception
    cases = []
    for path in sorted(ROOT.glob("*.jinja")):
        template = env.from_string(path.read_text())
        for i, messages in enumerate(CONVERSATIONS):
            for gen in (False, True):
                cases.append({
                    "template": path.name,
                    "messages": messages,
                    "add_generation_prompt": gen,
                    "expected": template.render(messages=messages, add_generation_prompt=gen, bos_token="", eos_token="<|im_end|>"),
                })
    (ROOT / "expected.json").write_text(json.dumps(cases, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {len(cases)} cases")


if __name__ == "__main__":
    main()
