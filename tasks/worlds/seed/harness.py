"""The agent harness: how an episode's state becomes the policy's prompt, how the policy's
text becomes an action, and what happens when that text is not a valid action.

Contract (the evaluator calls these; anything else here is private):

- ``render(state) -> str``: the prompt. ``state`` is ``{"question", "step", "max_steps",
  "history": [{"action": {"tool", "arg"}, "observation", "valid"}]}``.
- ``parse(text, state) -> {"tool": "search" | "open" | "answer", "arg": str} | None``: the
  action the policy's completion names, or None when it names none.
- ``format_action(action, state) -> str``: how an action is written as a completion; the
  policy is trained on ``render(state) + format_action(action, state)``.
- ``recover(text, state) -> action | None``: the action to take when ``parse`` gave None;
  None ends the episode as a failure.
"""

# EVOLVE-BLOCK-START
OBSERVATION_WORDS = 14  # the last observation is cut to this many words
RELEVANT_ONLY = False  # show only the sentences that name a relation the question asks about
SHOW_MEMORY = False  # keep the relevant facts of every article opened so far
SHOW_ACTIONS = 0  # how many of the previous actions to list
RECOVER_INVALID = False  # an unparsable completion searches the question's subject instead
SHOW_NEXT = False  # show the next relation to follow, and whether to open or answer after it
MENU = False  # offer numbered actions built from the last observation; the policy picks one
# EVOLVE-BLOCK-END

RELATION_WORDS = ("mentor", "birthplace", "employer", "base", "founder", "country", "ruler")


def _asked(question):
    return [w for w in question.split() if w in RELATION_WORDS]


def _sentences(text):
    parts = [p.strip() for p in text.split(" .")]
    return [p + " ." for p in parts if p]


def _relevant(text, question):
    asked = _asked(question)
    return [s for s in _sentences(text) if any(w in s.split() for w in asked)]


def _observation(state):
    if not state["history"]:
        return "none"
    text = state["history"][-1]["observation"]
    if RELEVANT_ONLY and state["history"][-1]["action"].get("tool") == "open":
        text = " ".join(_relevant(text, state["question"])) or text
    return " ".join(text.split()[:OBSERVATION_WORDS])


def _memory(state):
    facts = []
    for step in state["history"][:-1]:
        if step["action"].get("tool") == "open" and step["valid"]:
            facts += _relevant(step["observation"], state["question"])
    return " ".join(facts) or "nothing"


def _next(state):
    chain = list(reversed(_asked(state["question"])))
    opened = sum(1 for s in state["history"] if s["action"].get("tool") == "open" and s["valid"])
    if opened == 0:
        return "find " + state["question"].split()[-2]
    if opened > len(chain):
        return "answer"
    return chain[opened - 1] + (" then answer" if opened == len(chain) else " then open")


def _subject(state):
    return state["question"].split()[-2]


def _options(state):
    """The numbered actions MENU offers: what the last observation makes possible."""
    history, fallback = state["history"], [{"tool": "search", "arg": _subject(state)}]
    if not history or not history[-1]["valid"]:
        return fallback
    last = history[-1]
    if last["action"]["tool"] == "search":
        titles = last["observation"].replace("results :", "").split(" , ")
        return [{"tool": "open", "arg": t.strip()} for t in titles
                if t.strip() and "no results" not in t] or fallback
    options = []
    for sentence in _sentences(last["observation"]):
        words = sentence.split()
        relations = [w for w in words if w in RELATION_WORDS]
        if relations:
            for tool in ("open", "answer"):
                options.append({"tool": tool, "arg": words[-2], "label": relations[0]})
    return options or fallback


def _menu(state):
    return " , ".join(f"{i} {o['tool']} {o['arg']} {o.get('label', '')}".strip()
                      for i, o in enumerate(_options(state), 1))


def render(state):
    lines = ["question : " + state["question"]]
    if SHOW_NEXT:
        lines.append("next : " + _next(state))
    if SHOW_MEMORY:
        lines.append("memory : " + _memory(state))
    if SHOW_ACTIONS:
        done = [s["action"]["tool"] + " " + s["action"]["arg"]
                for s in state["history"][-SHOW_ACTIONS:]]
        lines.append("actions : " + (" , ".join(done) or "none"))
    lines.append("observation : " + _observation(state))
    if MENU:
        lines.append("options : " + _menu(state))
    lines.append("action :")
    return " ".join(lines)


def format_action(action, state):
    if MENU:
        for i, option in enumerate(_options(state), 1):
            if (option["tool"], option["arg"]) == (action["tool"], action["arg"]):
                return " " + str(i)
    return " " + action["tool"] + " " + action["arg"]


def parse(text, state):
    tokens = text.split()
    if MENU and tokens and tokens[0].isdigit():
        options = _options(state)
        if 1 <= int(tokens[0]) <= len(options):
            chosen = options[int(tokens[0]) - 1]
            return {"tool": chosen["tool"], "arg": chosen["arg"]}
        return None
    if len(tokens) < 2 or tokens[0] not in ("search", "open", "answer"):
        return None
    action = {"tool": tokens[0], "arg": tokens[1]}
    if MENU:  # free text: keep it if offered, else take the first offer of that tool
        offered = [o for o in _options(state) if o["tool"] == action["tool"]]
        if offered and all(o["arg"] != action["arg"] for o in offered):
            action = {"tool": offered[0]["tool"], "arg": offered[0]["arg"]}
    return action


def recover(text, state):
    if not RECOVER_INVALID:
        return None
    subject = state["question"].split()[-2]
    return {"tool": "search", "arg": subject}
