"""When two texts say the same thing word for word: the one rule by which a
note or a file's chunk may stand in for another (the dedupe walker, and the
writer's Supersede for notes)."""


def normalized(text: str) -> str:
    """Whitespace runs collapsed and case folded: "Keep  it\\nWEEKLY" -> "keep it weekly"."""
    return " ".join(text.split()).casefold()


def same_text(a: str, b: str) -> bool:
    return normalized(a) == normalized(b)
