"""TURL's column type annotation (Deng et al., 2020) as ToRR runs it (unitxt's ``cards.turl_col_type``): pick
the Freebase types of one column of a Wikipedia table from 255 candidates; unitxt's ``f1_micro``
(``F1MicroMultiLabel``) on one instance, as HELM reads unitxt's per-instance scores.

The card's loader (``TURLColumnTypeAnnotationLoader``) reads ``turl-column-type-annotation/<split>.table_col_type.json``
(train, dev → valid, test) from the Hub dataset ``stanford-crfm/helm-scenarios`` (main branch, unpinned). Each
item is a list: ``[table id, page title, page id, section title, caption, headers, columns, types]``. A column
is a list of cells ``[[row, column], [entity id, text]]``. The loader's table has the headers and, for each row
index ``i`` in ``range(max over columns of the last cell's row)``, each column's first cell at row ``i`` (else
``""``), rows all empty dropped: so the row of the largest index is never shown, as in unitxt. Every column of
a table is one instance (its name, its types as references), numbered in file order after the first 10,000
(the recipe's ``loader_limit``): ids are the split and that number (``test17``). The table is augmented and
serialised by the entry's ``serialization`` and ``augmentation``; five in-context examples.

Data: unitxt reads the main branch unpinned, so this scenario reads a mirror only
(``$HELMFLOW_MIRROR_TURL_COL_TYPE`` or ``$HELMFLOW_MIRROR``), each split's file pinned by sha256 at first use.
"""

from __future__ import annotations

import json
from typing import Any

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import UNPINNED, read_source
from helmflow.scenarios.helm_lite import generation_spec
from helmflow.scenarios.tables import TABLES_VERSION, Table, TableError, TableParams

SPLITS = (("train", "train", "train"), ("dev", "validation", "valid"), ("test", "test", "test"))  # file, unitxt, ours
LOADER_LIMIT = 10_000
# the card's ``vocab``: the candidate types, in the card's order (its instruction lists them joined by ", ")
VOCAB = (
    "royalty.noble_person", "business.business_operation", "protected_sites.listed_site", "music.writer",
    "people.ethnicity", "government.government_office_or_title", "organization.non_profit_organization",
    "business.brand", "tennis.tennis_tournament", "cvg.cvg_genre", "ice_hockey.hockey_position",
    "sports.sports_team", "computer.computer", "metropolitan_transit.transit_line", "award.award_category",
    "american_football.football_conference", "sports.professional_sports_team", "soccer.football_world_cup",
    "tv.tv_actor", "business.industry", "music.composition", "people.person", "broadcast.tv_channel",
    "cricket.cricket_player", "internet.website", "tennis.tennis_player", "music.media_format", "tv.tv_personality",
    "film.actor", "film.film_genre", "cvg.cvg_developer", "business.job_title", "chess.chess_player", "tv.tv_writer",
    "broadcast.broadcast", "soccer.fifa", "cvg.cvg_publisher", "film.writer", "medicine.anatomical_structure",
    "astronomy.celestial_object", "cricket.cricket_team", "sports.golfer", "book.periodical_subject",
    "military.rank", "spaceflight.astronaut", "medicine.disease", "location.province", "location.location",
    "amusement_parks.ride", "government.general_election", "music.musical_scale", "music.lyricist", "music.artist",
    "location.capital_of_administrative_division", "theater.play", "meteorology.tropical_cyclone",
    "aviation.airport", "basketball.basketball_team", "education.school", "soccer.football_position",
    "soccer.football_team", "cvg.cvg_platform", "religion.religious_leader", "business.defunct_company",
    "astronomy.asteroid", "sports.pro_athlete", "sports.school_sports_team", "baseball.baseball_league",
    "architecture.structure", "sports.tournament_event_competition", "sports.multi_event_tournament",
    "music.record_label", "travel.accommodation", "cricket.cricket_stadium", "ice_hockey.hockey_team",
    "award.competition", "business.consumer_company", "people.family_member", "biology.organism_classification",
    "business.product_category", "book.magazine", "royalty.kingdom", "fictional_universe.fictional_character",
    "education.athletics_brand", "military.military_unit", "american_football.football_coach",
    "broadcast.tv_station", "government.governmental_body", "boats.ship", "visual_art.visual_artist",
    "meteorology.tropical_cyclone_season", "sports.sports_league", "sports.sports_league_season",
    "soccer.football_team_manager", "boats.ship_class", "military.military_post",
    "education.educational_institution", "sports.sports_championship", "film.film",
    "award.award_presenting_organization", "soccer.football_award", "broadcast.artist", "computer.software",
    "broadcast.genre", "education.university", "time.recurring_event", "book.periodical", "celebrities.celebrity",
    "location.country", "soccer.football_player", "book.book", "geography.river", "medicine.drug_ingredient",
    "transportation.road", "olympics.olympic_games", "military.military_conflict", "chemistry.chemical_element",
    "location.us_state", "location.hud_county_place", "award.award_ceremony", "tv.tv_program_creator",
    "architecture.venue", "film.music_contributor", "architecture.architectural_structure_owner",
    "basketball.basketball_position", "astronomy.constellation", "law.court", "rail.locomotive_class",
    "book.newspaper", "film.director", "broadcast.radio_station", "tv.tv_series_season", "architecture.building",
    "olympics.olympic_event_competition", "music.instrument", "organization.organization",
    "computer.software_license", "government.election", "award.award", "tv.tv_director",
    "metropolitan_transit.transit_system", "tennis.tennis_tournament_champion", "cricket.cricket_bowler",
    "aviation.airline", "tv.tv_network", "music.musical_group", "government.politician",
    "music.music_video_director", "media_common.media_genre", "comic_books.comic_book_character",
    "automotive.company", "location.administrative_division", "government.political_party",
    "location.australian_local_government_area", "theater.theater_actor", "music.producer",
    "ice_hockey.hockey_player", "royalty.monarch", "sports.sports_championship_event", "sports.sports_league_draft",
    "food.food", "military.military_person", "geography.island", "location.uk_constituent_country",
    "tv.tv_series_episode", "government.u_s_congressperson", "amusement_parks.park", "book.written_work",
    "geography.body_of_water", "tv.tv_genre", "aviation.aircraft_owner", "interests.collection_category",
    "astronomy.star_system_body", "tv.tv_producer", "medicine.muscle", "baseball.baseball_team",
    "government.us_president", "location.citytown", "fictional_universe.fictional_organization", "biology.organism",
    "tv.tv_program", "soccer.football_league_season", "sports.boxer", "military.armed_force",
    "location.australian_state", "basketball.basketball_conference", "internet.website_owner", "medicine.drug",
    "award.award_discipline", "location.in_district", "business.consumer_product", "broadcast.radio_format",
    "baseball.baseball_position", "book.periodical_publisher", "government.government_agency", "sports.cyclist",
    "time.event", "automotive.model", "boats.ship_type", "finance.currency", "government.legislative_session",
    "american_football.football_player", "royalty.chivalric_order_member", "law.invention",
    "martial_arts.martial_artist", "film.film_character", "sports.sports_facility", "music.group_member",
    "location.region", "astronomy.orbital_relationship", "basketball.basketball_player", "cvg.computer_videogame",
    "law.legal_case", "language.human_language", "tv.tv_character", "education.educational_degree",
    "aviation.aircraft_model", "business.customer", "geography.mountain", "location.us_county", "music.album",
    "music.composer", "computer.operating_system", "religion.religion", "organization.membership_organization",
    "sports.sport", "location.uk_statistical_location", "location.in_state", "film.film_distributor",
    "basketball.basketball_coach", "medicine.medical_treatment", "education.fraternity_sorority",
    "metropolitan_transit.transit_stop", "chemistry.chemical_compound", "sports.sports_position", "music.genre",
    "award.hall_of_fame_inductee", "sports.sports_award_type", "exhibitions.exhibition_sponsor",
    "film.film_festival_focus", "film.production_company", "location.jp_prefecture", "education.field_of_study",
    "award.recurring_competition", "government.election_campaign", "sports.sports_award_winner",
    "astronomy.astronomical_discovery", "music.performance_role", "soccer.football_league", "book.author",
    "film.producer", "royalty.noble_title", "biology.animal", "american_football.football_team",
    "baseball.baseball_player",
)
INSTRUCTIONS = ("Choose the types of the selected column of the table from the candidate types, using the Wikipedia "
                "page, section and caption. Answer with the chosen types only, separated by commas, nothing else. "
                "Example inputs with their answers come first; answer the last input.\nCandidate types: "
                + ", ".join(VOCAB))


def turl_table(headers: list[Any], columns: list[Any]) -> Table:
    """unitxt's ``TURLColumnTypeAnnotationLoader._load_table``, its row range included."""
    if not columns:
        return {"header": headers, "rows": []}
    row_count = max(col[-1][0][0] for col in columns)
    rows = []
    for i in range(row_count):
        row = [next((cell[1][1] for cell in col if cell[0][0] == i), "") for col in columns]
        if any(row):
            rows.append(row)
    return {"header": headers, "rows": rows}


@scenario("turl_col_type")
class TurlColType(Scenario[TableParams]):
    VERSION = f"1.{TABLES_VERSION}"
    HUB_REPO = "stanford-crfm/helm-scenarios"
    HUB_REVISION = UNPINNED  # unitxt reads the main branch unpinned: runs from a mirror only
    Params = TableParams
    description = "TURL column types: annotate a table column with Freebase types (ToRR's serialisations and variants)"
    main_metric = "f1_micro"
    metrics = ["f1_micro", "efficiency"]
    default_adapter = generation_spec("", "Column types", 512, [], instructions=INSTRUCTIONS, max_train_instances=5)
    helm_wording = ("the Page Title:/Section Title:/Table caption:/Table:/Selected Column: layout, the 255 candidate "
                    "types in the instructions and five in-context examples follow the unitxt card's template; the "
                    "instruction sentences are helmflow's own; the examples are drawn by HELM's seeded draw, not "
                    "unitxt's demo sampler")
    helm_differences = ("turl_col_type: unitxt reads stanford-crfm/helm-scenarios' main branch unpinned; here it is "
                        "read from a mirror only, pinned by each file's sha256 at first use",)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=f"{split}.table_col_type.json",
                           url=self.hub_url(f"turl-column-type-annotation/{split}.table_col_type.json"))
                for split, _, _ in SPLITS]

    def load(self, files: dict[str, str]) -> list[Instance]:
        out: list[Instance] = []
        for split, named, ours in SPLITS:
            url = files[f"{split}.table_col_type.json"]
            try:
                items = json.loads(read_source(self.name, url))
            except json.JSONDecodeError as exc:
                raise ScenarioError(f"scenario {self.name!r}: {url} is not JSON: {exc}") from None
            if not isinstance(items, list):
                raise ScenarioError(f"scenario {self.name!r}: {url} is not a JSON list of tables")
            k = 0
            for t, item in enumerate(items):
                if k >= LOADER_LIMIT:
                    break
                try:
                    page, section, caption, headers = str(item[1]), str(item[3]), str(item[4]), list(item[5])
                    table = self.params.render(turl_table(headers, item[6]))
                    types = [list(item[7][c]) for c in range(len(headers))]
                except (TableError, IndexError, TypeError, KeyError, ValueError) as exc:
                    raise ScenarioError(f"scenario {self.name!r}: {url} table {t}: {exc}") from None
                for colname, labels in zip(headers, types, strict=True):
                    if k >= LOADER_LIMIT:
                        break
                    text = (f"Page Title: {page}\nSection Title: {section}\nTable caption: {caption}\n"
                            f"Table: {table}\nSelected Column: {colname}")
                    out.append(Instance(id=f"{named}{k}", split=ours, input=Input(text=text),
                                        references=[Reference(text=", ".join(map(str, labels)), correct=True)],
                                        extra={"column": str(colname)}))
                    k += 1
        return out
