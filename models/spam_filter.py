r"""SMS spam filter: two naive Bayes stories of a text message, and the words they learn.

The data are the 5,574 real text messages of the SMS Spam Collection (UCI), shipped with
genprob (``genprob.datasets.load_sms_spam``); 13% are spam.

Two generative stories of a message, both "naive" (words independent given the class):

* **Bernoulli (word presence).** Pick the class ``y ~ Bernoulli(pi)``; then for every word ``j``
  of the vocabulary flip a coin with the class's bias, ``x_j | y ~ Bernoulli(p_{yj})``: the word
  is in the message or not. Absent words count as evidence too.
* **Multinomial (word counts).** Pick the class; draw the message's length; then draw that many
  words independently from the class's word distribution ``x | y ~ Multinomial(n, p_y)``. Only
  the words that occur count as evidence.

Both fits are closed form: smoothed word frequencies per class (``alpha = 1``, Laplace). Both
stories have log-odds *linear* in the features,
``log p(spam | x) - log p(ham | x) = w . x + b``; ``genprob.linear_boundary`` returns ``(w, b)``
and the largest weights are the most spam-indicative words. For the multinomial story
``w_j = log p_{spam, j} - log p_{ham, j}``; for the Bernoulli story
``w_j = logit p_{spam, j} - logit p_{ham, j}`` (the bias absorbs the absent words).

The vocabulary is built by scikit-learn's ``CountVectorizer`` on the *training* messages only
(held-out messages may contain words never seen, which are then ignored).

Run: ``python models/spam_filter.py``.
"""

from __future__ import annotations

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.metrics import confusion_matrix
from sklearn.model_selection import train_test_split

import genprob


def main(*, test_size: float = 0.25, min_df: int = 2, top: int = 10, seed: int = 0) -> dict:
    """Fit both spam filters on a stratified split, print accuracy and the telling words.

    Args:
        test_size: fraction of the messages held out.
        min_df: keep words seen in at least this many training messages.
        top: number of spam- (and ham-) indicative words to report.
        seed: seed of the train/test split.

    Returns:
        Dict with ``accuracy`` (model -> held-out accuracy), ``spam_words`` and ``ham_words``
        (model -> list of words), ``spam_weights`` (model -> their weights ``w_j``),
        ``boundary_error`` (largest |(w . x + b) - log-odds| over the
        held-out messages, per model), ``vocabulary_size``, ``n_train``, ``n_test`` and
        ``confusion`` (model -> 2x2 matrix, rows true ham/spam, columns predicted).
    """
    texts, labels = genprob.datasets.load_sms_spam()
    train_texts, test_texts, y_train, y_test = train_test_split(
        texts, labels, test_size=test_size, random_state=seed, stratify=labels
    )
    vectorizer = CountVectorizer(min_df=min_df)
    counts_train = vectorizer.fit_transform(train_texts)  # sparse counts: never densified
    counts_test = vectorizer.transform(test_texts)
    vocabulary = vectorizer.get_feature_names_out()
    print(
        f"SMS spam: {len(y_train)} training / {len(y_test)} held-out messages, "
        f"vocabulary of {len(vocabulary)} words (min_df={min_df})"
    )

    models = {
        # binarize=0.0 turns counts into presence: the Bernoulli story sees a set of words.
        "bernoulli": genprob.BernoulliNB(alpha=1.0, binarize=0.0),
        "multinomial": genprob.MultinomialNB(alpha=1.0),
    }
    result = {
        "accuracy": {},
        "spam_words": {},
        "ham_words": {},
        "spam_weights": {},
        "boundary_error": {},
        "confusion": {},
        "vocabulary_size": len(vocabulary),
        "n_train": len(y_train),
        "n_test": len(y_test),
    }
    for name, model in models.items():
        model.fit(counts_train, y_train)
        predicted = model.predict(counts_test)
        accuracy = float(np.mean(predicted == y_test))
        spam = int(np.flatnonzero(model.classes_ == "spam")[0])
        ham = 1 - spam
        w, b = genprob.linear_boundary(model.story_, model.params_, spam, ham)

        # The boundary is the model's own log-odds: check it on the held-out messages.
        features = counts_test if name == "multinomial" else (counts_test > 0).astype(float)
        linear = np.asarray(features @ w).ravel() + b
        log_proba = model.predict_log_proba(counts_test)
        error = float(np.max(np.abs(linear - (log_proba[:, spam] - log_proba[:, ham]))))

        order = np.argsort(w)
        result["accuracy"][name] = accuracy
        result["spam_words"][name] = [str(v) for v in vocabulary[order[::-1][:top]]]
        result["ham_words"][name] = [str(v) for v in vocabulary[order[:top]]]
        result["spam_weights"][name] = [float(w[j]) for j in order[::-1][:top]]
        result["boundary_error"][name] = error
        result["confusion"][name] = confusion_matrix(y_test, predicted, labels=["ham", "spam"])

        print(f"\n{name} naive Bayes: held-out accuracy {accuracy:.4f}")
        print(f"  confusion (rows true ham/spam):\n{result['confusion'][name]}")
        print("  most spam-indicative words (w_j):")
        for j in order[::-1][:top]:
            print(f"    {vocabulary[j]:<12} {w[j]:+.2f}")
        print("  most ham-indicative words:", ", ".join(result["ham_words"][name]))
        print(f"  |w.x + b - log-odds| <= {error:.1e} on held-out messages")
    return result


if __name__ == "__main__":
    main()
