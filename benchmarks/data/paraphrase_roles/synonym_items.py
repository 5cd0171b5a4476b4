"""Synonym paraphrases, written by hand for ``build.py`` (see README.md).

Each item is (fact, paraphrase, control):

- the paraphrase says what the fact says with two or three of its words replaced by
  common synonyms (label: supported);
- the control is the paraphrase with one more word replaced by a word that changes the
  meaning -- an antonym or another member of the same field ("bought" -> "sold",
  "north" -> "south", "morning" -> "evening") -- so that it contradicts the fact
  (label: unsupported). Paraphrase and control share every synonym, so a checker that
  accepts synonyms blindly fails the control.

The first 8 items of each language are the dev split, the other 20 the held-out split
(split by fact).
"""

from __future__ import annotations

Item = tuple[str, str, str]

EN: list[Item] = [
    (
        "The city council approved the new budget on Tuesday.",
        "The city council passed the new budget on Tuesday.",
        "The city council rejected the new budget on Tuesday.",
    ),
    (
        "The company bought a small factory near the river.",
        "The firm purchased a small factory near the river.",
        "The firm sold a small factory near the river.",
    ),
    (
        "Prices of fresh vegetables rose sharply during the winter.",
        "Prices of fresh vegetables increased sharply during the winter.",
        "Prices of fresh vegetables dropped sharply during the summer.",
    ),
    (
        "The museum opened a large exhibition about ancient ships.",
        "The museum launched a big exhibition about ancient ships.",
        "The museum closed a big exhibition about ancient ships.",
    ),
    (
        "The children began the hike early in the morning.",
        "The kids started the hike early in the morning.",
        "The kids started the hike late in the evening.",
    ),
    (
        "The hospital hired twenty new nurses last year.",
        "The hospital employed twenty new nurses last year.",
        "The hospital fired twenty new nurses last year.",
    ),
    (
        "The train to the airport was quick and cheap.",
        "The train to the airport was fast and inexpensive.",
        "The train to the airport was slow and inexpensive.",
    ),
    (
        "The team won the final match after a difficult season.",
        "The team won the last game after a hard season.",
        "The team lost the last game after a hard season.",
    ),
    (
        "The bakery on Main Street sells bread every morning.",
        "The bakery on Main Street offers bread each morning.",
        "The bakery on Main Street buys bread each morning.",
    ),
    (
        "The teacher gave the students a difficult exam.",
        "The instructor gave the pupils a hard exam.",
        "The instructor gave the pupils an easy exam.",
    ),
    (
        "The storm damaged many houses along the coast.",
        "The storm harmed many homes along the coast.",
        "The storm harmed few homes along the coast.",
    ),
    (
        "The mayor announced a large park in the northern district.",
        "The mayor declared a big park in the northern district.",
        "The mayor declared a big park in the southern district.",
    ),
    (
        "The library extended its hours during the exam period.",
        "The library lengthened its hours during the exam period.",
        "The library shortened its hours during the exam period.",
    ),
    (
        "The factory reduced its water use by a third.",
        "The plant cut its water use by a third.",
        "The plant raised its water use by a third.",
    ),
    (
        "The author wrote her first novel in a small village.",
        "The writer composed her first novel in a little village.",
        "The writer composed her last novel in a little village.",
    ),
    (
        "The airline cancelled its evening flights to Rome.",
        "The airline called off its evening flights to Rome.",
        "The airline added its evening flights to Rome.",
    ),
    (
        "The doctor advised the patient to sleep more.",
        "The physician counseled the patient to sleep more.",
        "The physician counseled the patient to sleep less.",
    ),
    (
        "The school built a new gym for its pupils.",
        "The school constructed a new gym for its students.",
        "The school demolished a new gym for its students.",
    ),
    (
        "The farmers harvested the wheat before the rain.",
        "The farmers reaped the wheat before the rain.",
        "The farmers planted the wheat before the rain.",
    ),
    (
        "The bank raised its interest rate in March.",
        "The bank increased its interest rate in March.",
        "The bank lowered its interest rate in March.",
    ),
    (
        "The old bridge was repaired after the flood.",
        "The ancient bridge was fixed after the flood.",
        "The ancient bridge was destroyed after the flood.",
    ),
    (
        "The singer cancelled the concert because she was ill.",
        "The singer called off the concert because she was sick.",
        "The singer called off the concert because she was bored.",
    ),
    (
        "The government increased funding for rural hospitals.",
        "The government raised funding for rural hospitals.",
        "The government raised funding for urban hospitals.",
    ),
    (
        "The shop closed early because of the heavy snow.",
        "The store shut early because of the heavy snow.",
        "The store shut early because of the heavy rain.",
    ),
    (
        "The police arrested the thief near the station.",
        "The police caught the thief near the station.",
        "The police released the thief near the station.",
    ),
    (
        "The scientists found a rare plant in the forest.",
        "The researchers discovered a rare plant in the forest.",
        "The researchers discovered a rare animal in the forest.",
    ),
    (
        "The company moved its office to a larger building.",
        "The firm relocated its office to a bigger building.",
        "The firm relocated its office to a smaller building.",
    ),
    (
        "The minister answered the questions of the journalists.",
        "The minister replied to the questions of the reporters.",
        "The minister ignored the questions of the reporters.",
    ),
]

FR: list[Item] = [
    (
        "Le conseil municipal a approuvé le nouveau budget mardi.",
        "Le conseil municipal a adopté le nouveau budget mardi.",
        "Le conseil municipal a rejeté le nouveau budget mardi.",
    ),
    (
        "L'entreprise a acheté une petite usine près du fleuve.",
        "La société a acquis une petite usine près du fleuve.",
        "La société a vendu une petite usine près du fleuve.",
    ),
    (
        "Les prix des légumes frais ont fortement augmenté pendant l'hiver.",
        "Les prix des légumes frais ont nettement monté pendant l'hiver.",
        "Les prix des légumes frais ont nettement baissé pendant l'hiver.",
    ),
    (
        "Le musée a ouvert une grande exposition sur les navires antiques.",
        "Le musée a inauguré une vaste exposition sur les bateaux antiques.",
        "Le musée a fermé une vaste exposition sur les bateaux antiques.",
    ),
    (
        "Les enfants ont commencé la randonnée tôt le matin.",
        "Les gamins ont débuté la randonnée tôt le matin.",
        "Les gamins ont débuté la randonnée tard le soir.",
    ),
    (
        "L'hôpital a embauché vingt nouvelles infirmières l'an dernier.",
        "L'hôpital a engagé vingt nouvelles infirmières l'an dernier.",
        "L'hôpital a licencié vingt nouvelles infirmières l'an dernier.",
    ),
    (
        "Le train pour l'aéroport était rapide et bon marché.",
        "Le train pour l'aéroport était véloce et bon marché.",
        "Le train pour l'aéroport était lent et bon marché.",
    ),
    (
        "L'équipe a gagné le match final après une saison difficile.",
        "L'équipe a remporté le match final après une saison pénible.",
        "L'équipe a perdu le match final après une saison pénible.",
    ),
    (
        "La boulangerie de la rue principale vend du pain chaque matin.",
        "La boulangerie de la rue principale propose du pain chaque matin.",
        "La boulangerie de la rue principale achète du pain chaque matin.",
    ),
    (
        "Le professeur a donné aux élèves un examen difficile.",
        "L'enseignant a donné aux élèves un examen ardu.",
        "L'enseignant a donné aux élèves un examen facile.",
    ),
    (
        "La tempête a endommagé de nombreuses maisons le long de la côte.",
        "La tempête a abîmé de nombreuses habitations le long du littoral.",
        "La tempête a épargné de nombreuses habitations le long du littoral.",
    ),
    (
        "Le maire a annoncé un grand parc dans le quartier nord.",
        "Le maire a déclaré un vaste parc dans le quartier nord.",
        "Le maire a déclaré un vaste parc dans le quartier sud.",
    ),
    (
        "La bibliothèque a prolongé ses horaires pendant la période des examens.",
        "La bibliothèque a allongé ses horaires pendant la période des examens.",
        "La bibliothèque a raccourci ses horaires pendant la période des examens.",
    ),
    (
        "L'usine a réduit sa consommation d'eau d'un tiers.",
        "La fabrique a diminué sa consommation d'eau d'un tiers.",
        "La fabrique a accru sa consommation d'eau d'un tiers.",
    ),
    (
        "L'auteure a écrit son premier roman dans un petit village.",
        "L'écrivaine a rédigé son premier roman dans un petit village.",
        "L'écrivaine a rédigé son dernier roman dans un petit village.",
    ),
    (
        "La compagnie aérienne a annulé ses vols du soir vers Rome.",
        "La compagnie aérienne a supprimé ses vols du soir vers Rome.",
        "La compagnie aérienne a ajouté ses vols du soir vers Rome.",
    ),
    (
        "Le médecin a conseillé au patient de dormir davantage.",
        "Le docteur a recommandé au patient de dormir davantage.",
        "Le docteur a recommandé au patient de dormir moins.",
    ),
    (
        "L'école a construit un nouveau gymnase pour ses élèves.",
        "L'école a bâti un nouveau gymnase pour ses écoliers.",
        "L'école a démoli un nouveau gymnase pour ses écoliers.",
    ),
    (
        "Les agriculteurs ont récolté le blé avant la pluie.",
        "Les cultivateurs ont moissonné le blé avant la pluie.",
        "Les cultivateurs ont semé le blé avant la pluie.",
    ),
    (
        "La banque a relevé son taux d'intérêt en mars.",
        "La banque a augmenté son taux d'intérêt en mars.",
        "La banque a abaissé son taux d'intérêt en mars.",
    ),
    (
        "Le vieux pont a été réparé après l'inondation.",
        "Le vieux pont a été restauré après la crue.",
        "Le vieux pont a été détruit après la crue.",
    ),
    (
        "La chanteuse a annulé le concert parce qu'elle était malade.",
        "La chanteuse a supprimé le concert parce qu'elle était souffrante.",
        "La chanteuse a supprimé le concert parce qu'elle était fatiguée.",
    ),
    (
        "Le gouvernement a augmenté le financement des hôpitaux ruraux.",
        "Le gouvernement a accru le financement des hôpitaux ruraux.",
        "Le gouvernement a accru le financement des hôpitaux urbains.",
    ),
    (
        "Le magasin a fermé tôt à cause de la neige abondante.",
        "La boutique a fermé tôt à cause de la neige abondante.",
        "La boutique a fermé tôt à cause de la pluie abondante.",
    ),
    (
        "La police a arrêté le voleur près de la gare.",
        "La police a interpellé le cambrioleur près de la gare.",
        "La police a relâché le cambrioleur près de la gare.",
    ),
    (
        "Les scientifiques ont trouvé une plante rare dans la forêt.",
        "Les chercheurs ont découvert une plante rare dans la forêt.",
        "Les chercheurs ont découvert un animal rare dans la forêt.",
    ),
    (
        "La société a déménagé son bureau dans un bâtiment plus grand.",
        "L'entreprise a transféré son bureau dans un édifice plus grand.",
        "L'entreprise a transféré son bureau dans un édifice plus petit.",
    ),
    (
        "Le ministre a répondu aux questions des journalistes.",
        "Le ministre a répliqué aux questions des reporters.",
        "Le ministre a ignoré les questions des reporters.",
    ),
]

IT: list[Item] = [
    (
        "Il consiglio comunale ha approvato il nuovo bilancio martedì.",
        "Il consiglio comunale ha adottato il nuovo bilancio martedì.",
        "Il consiglio comunale ha respinto il nuovo bilancio martedì.",
    ),
    (
        "L'azienda ha comprato una piccola fabbrica vicino al fiume.",
        "La ditta ha acquistato una piccola fabbrica vicino al fiume.",
        "La ditta ha venduto una piccola fabbrica vicino al fiume.",
    ),
    (
        "I prezzi delle verdure fresche sono aumentati molto durante l'inverno.",
        "I prezzi delle verdure fresche sono cresciuti molto durante l'inverno.",
        "I prezzi delle verdure fresche sono calati molto durante l'inverno.",
    ),
    (
        "Il museo ha aperto una grande mostra sulle navi antiche.",
        "Il museo ha inaugurato una vasta esposizione sulle navi antiche.",
        "Il museo ha chiuso una vasta esposizione sulle navi antiche.",
    ),
    (
        "I bambini hanno iniziato l'escursione presto la mattina.",
        "I ragazzini hanno cominciato l'escursione presto la mattina.",
        "I ragazzini hanno cominciato l'escursione tardi la sera.",
    ),
    (
        "L'ospedale ha assunto venti nuove infermiere l'anno scorso.",
        "L'ospedale ha ingaggiato venti nuove infermiere l'anno scorso.",
        "L'ospedale ha licenziato venti nuove infermiere l'anno scorso.",
    ),
    (
        "Il treno per l'aeroporto era veloce ed economico.",
        "Il treno per l'aeroporto era rapido ed economico.",
        "Il treno per l'aeroporto era lento ed economico.",
    ),
    (
        "La squadra ha vinto la partita finale dopo una stagione difficile.",
        "La squadra ha vinto l'incontro finale dopo una stagione dura.",
        "La squadra ha perso l'incontro finale dopo una stagione dura.",
    ),
    (
        "Il panificio della via principale vende pane ogni mattina.",
        "Il forno della via principale offre pane ogni mattina.",
        "Il forno della via principale compra pane ogni mattina.",
    ),
    (
        "Il professore ha dato agli studenti un esame difficile.",
        "L'insegnante ha dato agli alunni un esame arduo.",
        "L'insegnante ha dato agli alunni un esame facile.",
    ),
    (
        "La tempesta ha danneggiato molte case lungo la costa.",
        "La tempesta ha rovinato molte abitazioni lungo il litorale.",
        "La tempesta ha risparmiato molte abitazioni lungo il litorale.",
    ),
    (
        "Il sindaco ha annunciato un grande parco nel quartiere nord.",
        "Il sindaco ha dichiarato un vasto parco nel quartiere nord.",
        "Il sindaco ha dichiarato un vasto parco nel quartiere sud.",
    ),
    (
        "La biblioteca ha prolungato l'orario durante il periodo degli esami.",
        "La biblioteca ha allungato l'orario durante il periodo degli esami.",
        "La biblioteca ha accorciato l'orario durante il periodo degli esami.",
    ),
    (
        "La fabbrica ha ridotto il consumo di acqua di un terzo.",
        "Lo stabilimento ha diminuito il consumo di acqua di un terzo.",
        "Lo stabilimento ha accresciuto il consumo di acqua di un terzo.",
    ),
    (
        "L'autrice ha scritto il suo primo romanzo in un piccolo paese.",
        "La scrittrice ha composto il suo primo romanzo in un piccolo paese.",
        "La scrittrice ha composto il suo ultimo romanzo in un piccolo paese.",
    ),
    (
        "La compagnia aerea ha cancellato i voli serali per Roma.",
        "La compagnia aerea ha annullato i voli serali per Roma.",
        "La compagnia aerea ha aggiunto i voli serali per Roma.",
    ),
    (
        "Il medico ha consigliato al paziente di dormire di più.",
        "Il dottore ha raccomandato al paziente di dormire di più.",
        "Il dottore ha raccomandato al paziente di dormire di meno.",
    ),
    (
        "La scuola ha costruito una nuova palestra per i suoi alunni.",
        "La scuola ha edificato una nuova palestra per i suoi allievi.",
        "La scuola ha demolito una nuova palestra per i suoi allievi.",
    ),
    (
        "Gli agricoltori hanno raccolto il grano prima della pioggia.",
        "I contadini hanno mietuto il grano prima della pioggia.",
        "I contadini hanno seminato il grano prima della pioggia.",
    ),
    (
        "La banca ha alzato il tasso di interesse a marzo.",
        "La banca ha aumentato il tasso di interesse a marzo.",
        "La banca ha abbassato il tasso di interesse a marzo.",
    ),
    (
        "Il vecchio ponte è stato riparato dopo l'alluvione.",
        "Il vecchio ponte è stato aggiustato dopo l'inondazione.",
        "Il vecchio ponte è stato distrutto dopo l'inondazione.",
    ),
    (
        "La cantante ha cancellato il concerto perché era malata.",
        "La cantante ha annullato il concerto perché era ammalata.",
        "La cantante ha annullato il concerto perché era annoiata.",
    ),
    (
        "Il governo ha aumentato i fondi per gli ospedali rurali.",
        "Il governo ha accresciuto i finanziamenti per gli ospedali rurali.",
        "Il governo ha accresciuto i finanziamenti per gli ospedali urbani.",
    ),
    (
        "Il negozio ha chiuso presto a causa della neve abbondante.",
        "La bottega ha chiuso presto a causa della neve abbondante.",
        "La bottega ha chiuso presto a causa della pioggia abbondante.",
    ),
    (
        "La polizia ha arrestato il ladro vicino alla stazione.",
        "La polizia ha catturato il ladro vicino alla stazione.",
        "La polizia ha rilasciato il ladro vicino alla stazione.",
    ),
    (
        "Gli scienziati hanno trovato una pianta rara nella foresta.",
        "I ricercatori hanno scoperto una pianta rara nel bosco.",
        "I ricercatori hanno scoperto un animale raro nel bosco.",
    ),
    (
        "La ditta ha trasferito il suo ufficio in un edificio più grande.",
        "L'impresa ha spostato il suo ufficio in un palazzo più grande.",
        "L'impresa ha spostato il suo ufficio in un palazzo più piccolo.",
    ),
    (
        "Il ministro ha risposto alle domande dei giornalisti.",
        "Il ministro ha replicato alle domande dei cronisti.",
        "Il ministro ha ignorato le domande dei cronisti.",
    ),
]

HE: list[Item] = [
    (
        "מועצת העיר אישרה את התקציב החדש ביום שלישי.",
        "מועצת העיר העבירה את התקציב החדש ביום שלישי.",
        "מועצת העיר דחתה את התקציב החדש ביום שלישי.",
    ),
    (
        "החברה קנתה מפעל קטן ליד הנהר.",
        "החברה רכשה מפעל קטן ליד הנהר.",
        "החברה מכרה מפעל קטן ליד הנהר.",
    ),
    (
        "מחירי הירקות הטריים עלו מאוד במהלך החורף.",
        "מחירי הירקות הטריים גדלו מאוד במהלך החורף.",
        "מחירי הירקות הטריים ירדו מאוד במהלך החורף.",
    ),
    (
        "המוזיאון פתח תערוכה גדולה על ספינות עתיקות.",
        "המוזיאון חנך תערוכה גדולה על אוניות עתיקות.",
        "המוזיאון סגר תערוכה גדולה על אוניות עתיקות.",
    ),
    (
        "הילדים התחילו את הטיול מוקדם בבוקר.",
        "הילדים החלו את הטיול מוקדם בבוקר.",
        "הילדים החלו את הטיול מאוחר בערב.",
    ),
    (
        "בית החולים העסיק עשרים אחיות חדשות בשנה שעברה.",
        "בית החולים גייס עשרים אחיות חדשות בשנה שעברה.",
        "בית החולים פיטר עשרים אחיות חדשות בשנה שעברה.",
    ),
    (
        "הרכבת לשדה התעופה הייתה מהירה וזולה.",
        "הרכבת לשדה התעופה הייתה זריזה וזולה.",
        "הרכבת לשדה התעופה הייתה איטית וזולה.",
    ),
    (
        "הקבוצה ניצחה במשחק האחרון אחרי עונה קשה.",
        "הקבוצה זכתה במשחק האחרון אחרי עונה קשה.",
        "הקבוצה הפסידה במשחק האחרון אחרי עונה קשה.",
    ),
    (
        "המאפייה ברחוב הראשי מוכרת לחם בכל בוקר.",
        "המאפייה ברחוב הראשי מציעה לחם בכל בוקר.",
        "המאפייה ברחוב הראשי קונה לחם בכל בוקר.",
    ),
    (
        "המורה נתן לתלמידים מבחן קשה.",
        "המורה נתן לתלמידים בחינה קשה.",
        "המורה נתן לתלמידים בחינה קלה.",
    ),
    (
        "הסערה הרסה בתים רבים לאורך החוף.",
        "הסערה החריבה בתים רבים לאורך החוף.",
        "הסערה החריבה בתים מעטים לאורך החוף.",
    ),
    (
        "ראש העיר הכריז על פארק גדול ברובע הצפוני.",
        "ראש העיר הודיע על גן גדול ברובע הצפוני.",
        "ראש העיר הודיע על גן גדול ברובע הדרומי.",
    ),
    (
        "הספרייה האריכה את שעות הפתיחה בתקופת הבחינות.",
        "הספרייה הגדילה את שעות הפתיחה בתקופת הבחינות.",
        "הספרייה קיצרה את שעות הפתיחה בתקופת הבחינות.",
    ),
    (
        "המפעל הקטין את צריכת המים בשליש.",
        "המפעל הפחית את צריכת המים בשליש.",
        "המפעל הגדיל את צריכת המים בשליש.",
    ),
    (
        "הסופרת כתבה את הרומן הראשון שלה בכפר קטן.",
        "הסופרת חיברה את הרומן הראשון שלה בכפר קטן.",
        "הסופרת חיברה את הרומן האחרון שלה בכפר קטן.",
    ),
    (
        "העירייה שיפצה את הספרייה הישנה.",
        "העירייה חידשה את הספרייה הוותיקה.",
        "העירייה סגרה את הספרייה הוותיקה.",
    ),
    (
        "הרופא המליץ למטופל לישון יותר.",
        "הרופא יעץ למטופל לישון יותר.",
        "הרופא יעץ למטופל לישון פחות.",
    ),
    (
        "בית הספר בנה אולם ספורט חדש לתלמידיו.",
        "בית הספר הקים אולם ספורט חדש לתלמידיו.",
        "בית הספר הרס אולם ספורט חדש לתלמידיו.",
    ),
    (
        "החקלאים קצרו את החיטה לפני הגשם.",
        "האיכרים קצרו את החיטה לפני הגשם.",
        "האיכרים זרעו את החיטה לפני הגשם.",
    ),
    (
        "הבנק העלה את הריבית במרץ.",
        "הבנק הגדיל את הריבית במרץ.",
        "הבנק הוריד את הריבית במרץ.",
    ),
    (
        "הגשר הישן תוקן אחרי השיטפון.",
        "הגשר העתיק שופץ אחרי השיטפון.",
        "הגשר העתיק נהרס אחרי השיטפון.",
    ),
    (
        "הזמרת ביטלה את ההופעה כי הייתה חולה.",
        "הזמרת ביטלה את הקונצרט כי הייתה חולה.",
        "הזמרת ביטלה את הקונצרט כי הייתה עייפה.",
    ),
    (
        "הממשלה הגדילה את המימון לבתי חולים כפריים.",
        "הממשלה הרחיבה את המימון לבתי חולים כפריים.",
        "הממשלה הרחיבה את המימון לבתי חולים עירוניים.",
    ),
    (
        "החנות נסגרה מוקדם בגלל השלג הכבד.",
        "החנות ננעלה מוקדם בגלל השלג הכבד.",
        "החנות ננעלה מוקדם בגלל הגשם הכבד.",
    ),
    (
        "המשטרה עצרה את הגנב ליד התחנה.",
        "המשטרה תפסה את הגנב ליד התחנה.",
        "המשטרה שחררה את הגנב ליד התחנה.",
    ),
    (
        "המדענים מצאו צמח נדיר ביער.",
        "החוקרים גילו צמח נדיר ביער.",
        "החוקרים גילו חיה נדירה ביער.",
    ),
    (
        "החברה העבירה את המשרד שלה לבניין גדול יותר.",
        "החברה העתיקה את המשרד שלה למבנה גדול יותר.",
        "החברה העתיקה את המשרד שלה למבנה קטן יותר.",
    ),
    (
        "השר ענה על שאלות העיתונאים.",
        "השר השיב על שאלות העיתונאים.",
        "השר התעלם משאלות העיתונאים.",
    ),
]
