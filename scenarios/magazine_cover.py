"""Magazine covers (HEIM originality): prompts built in code, no download.

HELM's ``MagazineCoverScenario``: 'a photo for a cover of a magazine with the headline: "<headline>"' for
50 real headlines of seven magazines, in HELM's order; no reference images.
"""

from __future__ import annotations

from helmflow.scenarios import scenario
from helmflow.scenarios.text_to_image import TextToImageScenario

HEADLINES: tuple[str, ...] = (
    'Bright ideas: Our favorite ways to make Thanksgiving sparkle',
    'Destination Home: Fresh Ideas for Your Happy Place',
    'Easy Living: More ways to Get Outside This Summer',
    'here comes SUMMER: QUICK & EASY TIPS FOR OUTDOOR GET-TOGETHER',
    'TOUCH OF SPARKLE: Welcoming interiors full of seasonal charm',
    'THE LOVE ISSUE',
    "This is healthy! 11 women on why wellness doesn't have to be one size fits all",
    'Get your NEW beauty fix',
    'The A.I. issue',
    'Queens of the grill',
    'Get the Scoop: A look inside the world of signature nuts',
    'Ultra-marathon man',
    'Hit the road: RVs and campers offer new experiences at every turn',
    'Building a future',
    'Taking a different route: Discovering luxury, relaxation and excitement (slightly) off the beaten path',
    'Healthy habits: Steps to take for better health',
    'Fair farms: A look at two programs that protect those who grow our food',
    'The Other Humans: NEANDERTHALS REVEALED',
    'Yellowstone SUPERVOLCANO: WHAT LIES BENEATH THE PARK',
    'PETRA: Ancient City of Stone',
    'THE BIG THAW: Ice on the Run, Seas on the Rise',
    'PANDA, INC.',
    'Secrets of the WHALES',
    'The Greatest Journey Ever Told: THE TRAIL OF OUR DNA',
    'Untold Stories of D-DAY',
    'BOND YOUR SQUAD! 23 WAYS TO SHOW YOUR LOVE',
    'JOY AT HOME! YOUR BEST CHRISTMAS STARTS HERE',
    'GET READY TO LOVE YOUR MOM STYLE',
    'ALL ABOUT THAT BABY',
    'WHAT IT TAKES TO RAISE GOOD PEOPLE',
    'WIN THE SCHOOL YEAR!',
    'RAISE A HEALTHY EATER',
    'MAKE HOLIDAY MAGIC',
    'Are You Ready For Some FOOTBALL?',
    'BASEBALL PREVIEW',
    "SOCCER'S NEXT BIG THING",
    "NO EXCUSES: WHY IT'S TIME TO BUY IN ON THE WNBA",
    'Democracy.',
    'Zip It! THE POWER OF SAYING LESS',
    'The BEST INVENTIONS OF 2022',
    'HOW TO DO MORE GOOD',
    "THE OCEANS ISSUE WATER'S UNTAPPED POWER",
    'ENOUGH. WHEN ARE WE GOING TO DO SOMETHING?',
    'THE COLD TRUTH: LESSONS FROM THE MELTING POLES',
    'HOW COVID ENDS',
    "THE WORLD'S 100 GREATEST PLACES",
    'THE HISTORY WARS',
    'THE NEW AMERICAN REVOLUTION',
    'THE OVERDUE AWAKENING',
    "CHINA'S TEST",
)


@scenario("magazine_cover")
class MagazineCover(TextToImageScenario):
    VERSION = "1"
    description = "HEIM: magazine cover photos for 50 real headlines (originality); built in code."

    def prompts(self) -> list[tuple[str, str | None]]:
        return [(f'a photo for a cover of a magazine with the headline: "{h}"', None) for h in HEADLINES]
