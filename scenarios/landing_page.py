"""Landing pages (HEIM originality): prompts built in code, no download.

HELM's ``LandingPageScenario``: "a landing page of a <app type> <platform> application" for 18 application
types x 2 platforms (mobile, web), in HELM's order; no reference images.
"""

from __future__ import annotations

from helmflow.scenarios import scenario
from helmflow.scenarios.text_to_image import TextToImageScenario

APPLICATION_TYPES: tuple[str, ...] = (
    'business',
    'design',
    'developer tools',
    'education',
    'entertainment',
    'finance',
    'games',
    'health and fitness',
    'lifestyle',
    'medical',
    'music',
    'news',
    'photo and video',
    'productivity',
    'social networking',
    'sports',
    'travel',
    'weather',
)

PLATFORMS: tuple[str, ...] = (
    'mobile',
    'web',
)


@scenario("landing_page")
class LandingPage(TextToImageScenario):
    VERSION = "1"
    description = "HEIM: landing pages of 18 application types on mobile and web (originality); built in code."

    def prompts(self) -> list[tuple[str, str | None]]:
        return [(f"a landing page of a {a} {p} application", None) for a in APPLICATION_TYPES for p in PLATFORMS]
