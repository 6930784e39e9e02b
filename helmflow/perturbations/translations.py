"""HEIM's translated MS-COCO entries (HELM's run expander: ``chinese``, ``hindi``, ``spanish``): each language's
code and the name of the table of translations it reads (English text -> translation)."""

TRANSLATIONS = {"chinese": "zh-CN", "hindi": "hi", "spanish": "es"}


def translation_file(language_code: str) -> str:
    return f"google_translate_{language_code}.json"
