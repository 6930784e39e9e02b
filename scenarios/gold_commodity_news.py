"""Gold commodity news (Sinha & Khandait, 2020): does a news headline about gold discuss one dimension (the
price, its direction, past or future information, a comparison with another asset), Yes or No, as HELM's
Enterprise board runs it (``gold_commodity_news_scenario.py``, run spec ``get_news_headline_spec``).

The data is Kaggle's ``daittan/gold-commodity-news-and-dimensions`` (version 1), which HELM downloads
through Kaggle's API: that needs a Kaggle account, so helmflow never downloads it. The user downloads the
zip, unzips ``finalDataset_0208.csv`` and puts it where a mirror is read (``$HELMFLOW_MIRROR_GOLD_COMMODITY_NEWS``
naming its folder, or ``$HELMFLOW_MIRROR/gold_commodity_news/kaggle-v1/``): the source is credential-gated
(``DataSource.gated``), so without it a board leaves the scenario out with one line saying so and runs the
rest. HELM reads every row as a test instance (``News`` the input, ``Yes`` when the category's column is 1,
else ``No``), then moves ``random.sample(range(n), n // 10)`` of them (after ``random.seed(0)``) to train.
Generation (``Headline:`` / ``Answer:``, 5 tokens, five examples), scored by exact match and
``classification_weighted_f1`` (the main metric).
"""

from __future__ import annotations

import math
import random
from typing import Literal

from pydantic import BaseModel, ConfigDict

from helmflow.records import AdapterSpec, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, scenario
from helmflow.scenarios.base import read_csv_source
from helmflow.scenarios.helm_lite import generation_spec

KAGGLE_PAGE = "https://www.kaggle.com/datasets/daittan/gold-commodity-news-and-dimensions"
KAGGLE_URL = ("https://www.kaggle.com/api/v1/datasets/download/daittan/gold-commodity-news-and-dimensions"
              "?dataset_version_number=1")
FILENAME = "finalDataset_0208.csv"
Category = Literal["price_or_not", "direction_up", "direction_constant", "direction_down", "past_price",
                   "future_price", "past_news", "future_news", "assert_comparison"]
# category -> (HELM's CSV column, what the headline may discuss: our wording of HELM's description)
CATEGORIES: dict[str, tuple[str, str]] = {
    "price_or_not": ("Price or Not", "the price of gold"),
    "direction_up": ("Direction Up", "the price of gold going up"),
    "direction_constant": ("Direction Constant", "the price staying constant or stable"),
    "direction_down": ("Direction Down", "the price of gold going down"),
    "past_price": ("PastPrice", "past information about the price of gold"),
    "future_price": ("FuturePrice", "future information about the price of gold"),
    "past_news": ("PastNews", "past information other than the price of gold"),
    "future_news": ("FutureNews", "future information other than the price of gold"),
    "assert_comparison": ("Asset Comparision", "a comparison of gold, as a commodity, with another asset"),
}  # fmt: skip
TRAIN_SHARE_DIVISOR, SEED = 10, 0


class GoldNewsParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    category: Category


def instructions(category: str) -> str:
    """Our wording of HELM's ``get_instructions``: the headlines are about gold; Yes or No for one dimension."""
    return (f"Each headline below is news about gold. Say whether the headline discusses "
            f"{CATEGORIES[category][1]}. Answer Yes or No only.")


def is_one(value: str | None) -> bool:
    """HELM's ``row[column] == 1`` on the pandas-parsed cell: 1, 1.0 are; anything else (empty too) is not."""
    try:
        return float(value or "nan") == 1.0
    except ValueError:
        return False


def helm_train_rows(count: int) -> set[int]:
    """The rows HELM moves to train: ``random.seed(0)``, then ``random.sample(range(count), count // 10)``."""
    return set(random.Random(SEED).sample(range(count), k=math.floor(count / TRAIN_SHARE_DIVISOR)))


@scenario("gold_commodity_news")
class GoldCommodityNews(Scenario[GoldNewsParams]):
    VERSION = "1"
    SOURCE_REVISION = "kaggle-v1"
    Params = GoldNewsParams
    description = "Gold commodity news: does a headline discuss a price dimension, Yes or No (HELM Enterprise)."
    main_metric = "classification_weighted_f1"
    metrics = ["classification_weighted_f1", "exact_match", "quasi_exact_match", "efficiency"]
    helm_wording = ("the Headline:/Answer: layout, 5 tokens and five in-context examples follow HELM's run spec; the "
                    "instructions are helmflow's own sentence naming the same dimension")
    helm_differences = ("gold_commodity_news: HELM downloads the Kaggle dataset with the user's Kaggle credentials; "
                        "helmflow reads finalDataset_0208.csv that the user supplies, pinned by its sha256 at first "
                        "read",)

    @property
    def default_adapter(self) -> AdapterSpec:
        return generation_spec("Headline: ", "Answer", 5, ["\n"], instructions=instructions(self.params.category))

    def sources(self) -> list[DataSource]:
        gated = (f"download version 1 of the Kaggle dataset at {KAGGLE_PAGE} (Kaggle asks you to sign in) "
                 f"and unzip {FILENAME}")
        return [DataSource(filename=FILENAME, url=f"zip://{FILENAME}::simplecache::{KAGGLE_URL}", sha256_unknown=True,
                           gated=gated)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        column = CATEGORIES[self.params.category][0]
        rows = read_csv_source(self.name, files[FILENAME], ["News", column])
        train = helm_train_rows(len(rows))
        return [Instance(id=f"id{i}", split="train" if i in train else "test", input=Input(text=row["News"]),
                         references=[Reference(text="Yes" if is_one(row[column]) else "No", correct=True)])
                for i, row in enumerate(rows)]
